import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { resultsContract } from './results.contract.js';

for (const engine of contractEngines()) describe(`job results [${engine.name}]`, () => resultsContract(engine));
