// README's and getting-started's code blocks in a fresh app of the install matrix's cell on
// Temporal 1.24 alone (test/readme-blocks.ts); each cell is a file of its own, so the cells run in parallel.
import { CELLS, readmeCell } from './readme-blocks';

readmeCell(CELLS.temporal124);
