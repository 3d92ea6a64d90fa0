import { startMariadb } from '../../env/mariadb.ts';
import { defineMigrationSuite } from './migration-suite.ts';

defineMigrationSuite('mysql', startMariadb);
