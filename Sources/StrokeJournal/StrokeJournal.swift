// The library in one import: `import StrokeJournal` gives an app the event model and codec,
// journals and their writer, replay, sync and NDJSON ingest. Each layer stays its own module
// (docs: README "Layout"); this one only re-exports them.
@_exported import JournalFormat
@_exported import JournalIngest
@_exported import JournalReplay
@_exported import JournalStorage
@_exported import JournalSync
