import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { limitsContract } from './limits.contract.js';

for (const engine of contractEngines())
  describe(`per-key and global limits [${engine.name}]`, () => limitsContract(engine));
