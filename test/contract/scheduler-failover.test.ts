import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { schedulerFailoverContract } from './scheduler-failover.contract.js';

for (const engine of contractEngines())
  describe(`scheduler failover [${engine.name}]`, () => schedulerFailoverContract(engine));
