/** Files through which the detached supervisor tells `npm run env -- up` how its start went. */
export const READY_FILE = 'supervisor.ready';
export const FAILED_FILE = 'supervisor.failed';
