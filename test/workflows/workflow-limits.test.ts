import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { workflowLimitsContract } from './workflow-limits.contract.js';

for (const engine of contractEngines())
  describe(`workflow limits [${engine.name}]`, () => workflowLimitsContract(engine));
