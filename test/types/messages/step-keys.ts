// A prerequisite the typed workflow builder has not seen: the error names the key.
import { workflow } from 'runledger';

export const unknownPrerequisite = workflow('m.run').job('a', 'm.a', {}).afterSuccess('a', ['nope']); // error: no step 'nope' in this workflow
export const unknownStep = workflow('m.run').job('a', 'm.a', {}).afterTerminal('ghost', ['a']); // error: no step 'ghost' in this workflow
