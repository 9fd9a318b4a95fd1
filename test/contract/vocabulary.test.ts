import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { vocabularyContract } from './vocabulary.contract.js';

for (const engine of contractEngines())
  describe(`one word per idea: the lease [${engine.name}]`, () => vocabularyContract(engine));
