/**
 * The on-site selftest: every check a technician needs to know whether this device can take money
 * and deliver goods, built from the same settings and factories as the service. Also the systemd
 * watchdog, which is the service testing itself every few seconds.
 */
export { runSelftest, settingsFailureReport, SELFTEST_REPORT_VERSION, type SelftestRun } from './run.js';
export { formatReport, formatReportJson } from './report.js';
export { sharedReport, redactShared } from './shared-report.js';
export { storeSelftestResult, lastSelftestResult, LAST_RESULT_KEY } from './result-store.js';
export { describeActuation, actuatorCheckName } from './checks/hardware.js';
export { signedTestEvent, SELFTEST_EVENT_TYPE, type SignedTestEvent } from './test-event.js';
export { startWatchdog, watchdogIntervalMs, databaseProbe, watchdogDatabasePath, type Watchdog } from './watchdog.js';
export type { CheckResult, CheckStatus, SelftestReport, SelftestDeps, SelftestOptions, LiveComponents, Exec } from './types.js';
