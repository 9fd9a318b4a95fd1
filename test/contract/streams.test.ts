import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { streamContract } from './streams.contract.js';

for (const engine of contractEngines()) describe(`streams [${engine.name}]`, () => streamContract(engine));
