import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { inboxContract } from './inbox.contract.js';

for (const engine of contractEngines()) describe(`inbox [${engine.name}]`, () => inboxContract(engine));
