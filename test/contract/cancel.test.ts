import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { cancelContract } from './cancel.contract.js';

for (const engine of contractEngines()) describe(`cancel [${engine.name}]`, () => cancelContract(engine));
