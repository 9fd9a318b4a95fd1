import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { transactionContract } from './transactions.contract.js';

for (const engine of contractEngines()) describe(`transactions [${engine.name}]`, () => transactionContract(engine));
