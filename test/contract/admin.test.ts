import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { adminContract } from './admin.contract.js';

for (const engine of contractEngines()) describe(`admin [${engine.name}]`, () => adminContract(engine));
