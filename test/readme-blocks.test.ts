// The docs' code blocks (test/readme-blocks.ts): every runnable block is claimed by a step of the
// readme-blocks files, and installing.md's install lines run in empty apps. README's and
// getting-started's blocks run in the install matrix's cells, a test file each, in parallel.
import { everyBlockClaimed, installingLines } from './readme-blocks';

everyBlockClaimed();
installingLines();
