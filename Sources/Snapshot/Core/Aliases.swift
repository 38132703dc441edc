import Catalog

/// GRDB also exports a `Record` class; inside this module `Record` is ours.
typealias Record = Catalog.Record
