import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { outboxContract } from './outbox.contract.js';

for (const engine of contractEngines()) describe(`outbox [${engine.name}]`, () => outboxContract(engine));
