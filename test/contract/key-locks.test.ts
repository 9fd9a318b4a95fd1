import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { keyLocksContract } from './key-locks.contract.js';

for (const engine of contractEngines()) describe(`key locks [${engine.name}]`, () => keyLocksContract(engine));
