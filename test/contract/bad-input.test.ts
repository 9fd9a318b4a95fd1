import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { badInputContract, entryPointCoverageContract } from './bad-input.contract.js';

for (const engine of contractEngines()) {
  describe(`bad input [${engine.name}]`, () => badInputContract(engine));
  describe(`entry point coverage [${engine.name}]`, () => entryPointCoverageContract(engine));
}
