import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { queueFeaturesContract } from './queue-features.contract.js';

for (const engine of contractEngines())
  describe(`queue features [${engine.name}]`, () => queueFeaturesContract(engine));
