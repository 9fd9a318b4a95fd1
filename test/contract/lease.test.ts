import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { leaseContract } from './lease.contract.js';

for (const engine of contractEngines()) describe(`leases [${engine.name}]`, () => leaseContract(engine));
