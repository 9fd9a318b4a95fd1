import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { adminSearchContract } from './admin-search.contract.js';

for (const engine of contractEngines()) describe(`admin search [${engine.name}]`, () => adminSearchContract(engine));
