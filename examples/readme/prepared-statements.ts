import { PrismaPg } from '@prisma/adapter-pg';
import { preparedStatementName } from 'runledger';

// Your client: new PrismaClient({ adapter: preparedStatementsAdapter(connectionString) })
export function preparedStatementsAdapter(connectionString: string) {
  return new PrismaPg({ connectionString }, { statementNameGenerator: preparedStatementName });
}
