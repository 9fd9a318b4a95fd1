import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { cronContract } from './cron.contract.js';

for (const engine of contractEngines()) describe(`cron schedules [${engine.name}]`, () => cronContract(engine));
