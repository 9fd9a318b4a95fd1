import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { queueContract } from './queues.contract.js';

for (const engine of contractEngines()) describe(`queues [${engine.name}]`, () => queueContract(engine));
