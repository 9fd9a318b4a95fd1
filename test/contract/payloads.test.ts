import { describe } from '@jest/globals';
import { contractEngines } from '../helpers/engines.js';
import { payloadContract } from './payloads.contract.js';

for (const engine of contractEngines()) {
  describe(`payloads [${engine.name}]`, () => payloadContract(engine));
}
