import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { notifyCommitContract } from './notify-commit.contract.js';

for (const engine of contractEngines()) describe(`notify-commit [${engine.name}]`, () => notifyCommitContract(engine));
