import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { countersContract } from './counters.contract.js';

for (const engine of contractEngines()) describe(`stats counters [${engine.name}]`, () => countersContract(engine));
