import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { dueTimerContract } from './due-timer.contract.js';

for (const engine of contractEngines()) describe(`due timer [${engine.name}]`, () => dueTimerContract(engine));
