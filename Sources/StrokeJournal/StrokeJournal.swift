// The library in one import: `import StrokeJournal` gives an app the event model and codec,
// journals and their writer, replay, live boards, sync, NDJSON ingest, SVG rendering and the relay's
// wire messages (a client of `journal serve`).
// Each layer stays its own module (docs/ARCHITECTURE.md); this one only re-exports them.
@_exported import JournalCommit
@_exported import JournalFormat
@_exported import JournalIngest
@_exported import JournalKeys
@_exported import JournalLive
@_exported import JournalRender
@_exported import JournalReplay
@_exported import JournalStorage
@_exported import JournalSync
@_exported import JournalWire
