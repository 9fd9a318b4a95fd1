import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { retentionContract } from './retention.contract.js';

for (const engine of contractEngines()) describe(`retention [${engine.name}]`, () => retentionContract(engine));
