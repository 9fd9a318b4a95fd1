import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { notifyContract } from './notify.contract.js';

for (const engine of contractEngines()) describe(`notify [${engine.name}]`, () => notifyContract(engine));
