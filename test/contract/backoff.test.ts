import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { backoffContract } from './backoff.contract.js';

for (const engine of contractEngines()) describe(`backoff [${engine.name}]`, () => backoffContract(engine));
