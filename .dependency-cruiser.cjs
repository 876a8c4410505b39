/**
 * The import boundaries of ARCHITECTURE.md ("Arrows" and the "nevers"), checked in CI by
 * `npm run check:boundaries`. Known violations that exist today are listed, each one, in
 * .dependency-cruiser-known-violations.json (see ARCHITECTURE.md, "Debt"); anything NEW fails.
 * Regenerate the list only when a violation is removed: `npm run check:boundaries:baseline`.
 */
const moneyPath = '^src/(orders|ledger|vend|money)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    // --- circles -----------------------------------------------------------------------------
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'A module reaches itself through its imports. Declare the port the importer needs in the importer instead (see BackfillInbox, DeviceControlDeps).',
      from: { path: '^src/' },
      to: { circular: true },
    },
    // Circles between folders: scripts/check-boundaries.mjs (with its known-debt list).

    // --- ARCHITECTURE.md "nevers" ------------------------------------------------------------------
    {
      name: 'money-path-never-waits-on-the-broker',
      severity: 'error',
      comment:
        'The money path (orders, ledger, vend, money) writes outbox rows in its own transactions; mqtt/ reads and publishes them. It never imports mqtt/, the mqtt library, the kiosk, the channels, metrics/ or device/ (it reports through callbacks such as onSettled, and reads availability through its outOfService port).',
      from: { path: moneyPath },
      to: {
        path: [
          '^src/(mqtt|kiosk|channels|fleet-relay|simulator|selftest|cli|metrics|device)/',
          '^src/app\\.ts$',
          'node_modules/(mqtt|aedes|fastify|@fastify)/',
        ],
      },
    },
    {
      name: 'device-takes-ports-not-the-app',
      severity: 'error',
      comment:
        'device/ (availability, operator controls, the screen, reactions to inputs) declares the narrow ports it uses; app.ts composes it. It never imports app.ts (no service locator), the channels, the relay or the simulator.',
      from: { path: '^src/device/' },
      to: { path: ['^src/app\\.ts$', '^src/(channels|fleet-relay|simulator)/'] },
    },
    {
      name: 'hardware-knows-no-money',
      severity: 'error',
      comment: 'hardware/ drives relays and serial lines; it knows nothing of payments, orders, the ledger or vend jobs.',
      from: { path: '^src/hardware/' },
      to: { path: ['^src/(payments|ledger|orders|vend|money|channels|outbox|mqtt|kiosk|catalog)/'] },
    },
    {
      name: 'payment-adapters-translate-not-decide',
      severity: 'error',
      comment: 'payments/ adapters translate the provider; they import no ledger, channels, orders or vend.',
      from: { path: '^src/payments/' },
      to: { path: ['^src/(ledger|channels|orders|vend|money|outbox|mqtt|kiosk|hardware)/'] },
    },
    {
      name: 'money-path-never-waits-on-the-register',
      severity: 'error',
      comment:
        'A vend never waits for a fiscal register: orders, ledger, vend and money write the receipt row through their ReceiptPort (src/vend/settlement.ts), passed in by app.ts; they never import fiscal/ (its worker, its registers).',
      from: { path: moneyPath },
      to: { path: '^src/fiscal/' },
    },
    {
      name: 'fiscal-issues-receipts-decides-no-money',
      severity: 'error',
      comment:
        'fiscal/ issues receipts for what the money path settled; it imports no money path, channel, listener, device, hardware, payment adapter or simulator (payments/ types and its HTTP client are allowed): it is told through its ports (ReceiptPort, stopSales).',
      from: { path: '^src/fiscal/' },
      to: {
        path: [
          '^src/(orders|ledger|vend|money|channels|mqtt|kiosk|device|hardware|simulator|fleet-relay|selftest|cli)/',
          '^src/payments/(gerege|qutpay|sandbox)/',
          '^src/app\\.ts$',
        ],
      },
    },
    {
      name: 'simulator-shares-nothing-with-payments',
      severity: 'error',
      comment:
        "The provider simulator is the independent counterpart of the adapters (payment providers and fiscal registers), written from docs/providers.md and the registers' own documentation: one bug must not pass on both sides of a contract test.",
      from: { path: '^src/simulator/' },
      to: { path: '^src/(payments|fiscal)/' },
    },
    {
      name: 'payments-use-no-simulator',
      severity: 'error',
      comment: 'The adapters do not borrow from the simulator either.',
      from: { path: '^src/payments/' },
      to: { path: '^src/simulator/' },
    },
    {
      name: 'kiosk-moves-no-money',
      severity: 'error',
      comment: 'The kiosk never moves money or fires hardware itself: it gets its ports (KioskDeps) injected.',
      from: { path: '^src/kiosk/' },
      to: { path: '^src/(ledger|vend|orders|money|payments|hardware|store|channels|mqtt)/' },
    },

    // --- libraries only in their own folder ----------------------------------------------------
    {
      name: 'gpio-and-serial-only-in-hardware',
      severity: 'error',
      comment: 'onoff and serialport are imported only inside hardware/.',
      from: { pathNot: '^src/hardware/' },
      to: { path: 'node_modules/(onoff|serialport|@serialport)/' },
    },
    {
      name: 'native-modules-load-lazily',
      severity: 'error',
      comment: 'Native modules are loaded with dynamic import() so a machine without GPIO or serial never loads them.',
      from: { path: '^src/' },
      to: { path: 'node_modules/(onoff|serialport|@serialport)/', dependencyTypesNot: ['dynamic-import', 'type-only'] },
    },
    {
      name: 'mqtt-only-in-mqtt',
      severity: 'error',
      comment:
        'The mqtt library and the embedded broker are imported only inside mqtt/ (fleet-relay/ uses mqtt/fleet-relay-connection.ts).',
      from: { pathNot: '^src/mqtt/' },
      to: { path: 'node_modules/(mqtt|aedes)/' },
    },
    {
      name: 'fastify-only-in-listeners',
      severity: 'error',
      comment: 'fastify is imported only by the HTTP listeners: channels/webhook/, kiosk/, simulator/, fleet-relay/.',
      from: { pathNot: '^src/(channels/webhook|kiosk|simulator|fleet-relay)/' },
      to: { path: 'node_modules/(fastify|@fastify)/' },
    },
    {
      name: 'no-dev-dependencies-in-src',
      severity: 'error',
      comment: 'The device installs with npm ci --omit=dev: src/ may not import a devDependency.',
      from: { path: '^src/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'only-main-and-cli-use-the-cli',
      severity: 'error',
      comment: 'cli/ is the top of the graph: nothing below it imports it (main.ts alone exits).',
      from: { path: '^src/', pathNot: '^src/(cli/|main\\.ts$)' },
      to: { path: '^src/(cli/|main\\.ts$)' },
    },

    // --- house style (reported, does not fail the build) -----------------------------------------
    {
      name: 'import-a-folder-through-its-index',
      severity: 'warn',
      comment:
        "Other folders import only a folder's index.ts (util/ is a toolbox and exempt). Reported, not enforced: 40-odd imports of payments/types.ts and settings/sections/ predate the rule. payments/ has two more faces, because its index must not evaluate the adapters (a device loads only its own, through createProvider's import()): adapters.ts (every adapter's exports: tests, the fleet relay's Kaspi caller) and route-lookup.ts (the relay's read-only clients).",
      from: { path: '^src/([^/]+)/' },
      to: {
        path: '^src/([^/]+)/.+',
        pathNot: [
          '^src/$1/',
          '^src/util/',
          '^src/[^/]+/index\\.ts$',
          '^src/[^/]+/[^/]+/index\\.ts$',
          '^src/payments/(?:adapters|route-lookup)\\.ts$',
        ],
      },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|test)/' },
    tsConfig: { fileName: 'tsconfig.json' },
    // Count `import type` too: a type-only import is still a dependency between two folders.
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
    skipAnalysisNotInRules: true,
  },
};
