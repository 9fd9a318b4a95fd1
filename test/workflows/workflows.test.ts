import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { workflowsContract } from './workflows.contract.js';

for (const engine of contractEngines()) describe(`workflows [${engine.name}]`, () => workflowsContract(engine));
