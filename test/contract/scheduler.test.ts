import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { schedulerContract } from './scheduler.contract.js';

for (const engine of contractEngines()) describe(`scheduler [${engine.name}]`, () => schedulerContract(engine));
