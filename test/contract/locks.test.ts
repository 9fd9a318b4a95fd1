import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { lockContract } from './locks.contract.js';

for (const engine of contractEngines()) describe(`locks [${engine.name}]`, () => lockContract(engine));
