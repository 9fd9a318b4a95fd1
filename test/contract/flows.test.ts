import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { flowsContract } from './flows.contract.js';

for (const engine of contractEngines()) describe(`job flows [${engine.name}]`, () => flowsContract(engine));
