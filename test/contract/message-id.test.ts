import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { messageIdContract } from './message-id.contract.js';

for (const engine of contractEngines()) describe(`message ids [${engine.name}]`, () => messageIdContract(engine));
