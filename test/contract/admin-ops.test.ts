import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { adminOpsContract } from './admin-ops.contract.js';

for (const engine of contractEngines())
  describe(`admin edit, workers, receipts, history [${engine.name}]`, () => adminOpsContract(engine));
