/**
 * Writes the layer diagram of ARCHITECTURE.md (between its "floors" markers)
 * from .dependency-cruiser.cjs's FLOORS, the list CI enforces.
 * test/unit/architecture.test.ts fails when the file and the rule disagree.
 *
 *   npx tsx scripts/architecture.ts
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { floorsMarkdown, replaceFloorsSection } from './architecture-floors.js';

const path = new URL('../ARCHITECTURE.md', import.meta.url);
writeFileSync(path, replaceFloorsSection(readFileSync(path, 'utf8'), floorsMarkdown()));
console.log('ARCHITECTURE.md: floors section written');
