/**
 * Composed SQL (`sqltag` fragments joined together) handed to a client's
 * tagged `$queryRaw`: the structural client type (src/client/types.ts) takes
 * only the template form, so a composed query is spread back into it. Values
 * stay bound parameters; nothing is interpolated into the text.
 */
import type { Sql } from '@prisma/client/runtime/client';
import type { RawQueryArgs } from '../client/types.js';

export function asTemplate(query: Sql): RawQueryArgs {
  const strings = Object.assign([...query.strings], { raw: [...query.strings] }) as unknown as TemplateStringsArray;
  return [strings, ...query.values];
}
