import { startPostgres } from '../../env/postgres.ts';
import { defineMigrationSuite } from './migration-suite.ts';

defineMigrationSuite('postgres', startPostgres);
