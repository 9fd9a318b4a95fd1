import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { nameContract } from './names.contract.js';

for (const engine of contractEngines()) describe(`names [${engine.name}]`, () => nameContract(engine));
