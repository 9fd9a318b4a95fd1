import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { handoffContract } from './handoff.contract.js';

for (const engine of contractEngines()) describe(`local hand-off [${engine.name}]`, () => handoffContract(engine));
