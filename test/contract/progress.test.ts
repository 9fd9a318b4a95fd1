import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { progressContract } from './progress.contract.js';

for (const engine of contractEngines()) describe(`job progress [${engine.name}]`, () => progressContract(engine));
