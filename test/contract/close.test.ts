import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { closeContract } from './close.contract.js';

for (const engine of contractEngines()) describe(`close [${engine.name}]`, () => closeContract(engine));
