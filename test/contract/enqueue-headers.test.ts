import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { enqueueHeadersContract } from './enqueue-headers.contract.js';

for (const engine of contractEngines())
  describe(`enqueue headers of a store [${engine.name}]`, () => enqueueHeadersContract(engine));
