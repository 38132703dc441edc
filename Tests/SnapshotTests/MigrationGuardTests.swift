import Catalog
import Foundation
@testable import Snapshot
import Testing
import TestSupport

/// Workers take no run lock, so `migrate` checks for a fleet's night itself.
@Suite struct MigrationGuardTests {
    @Test(.enabled(if: StoreEngine.tested.contains(.postgres)))
    func aStoreWithStagedPagesIsNotMigrated() async throws {
        let postgres = try await StoreEngine.postgres.makeLocation()
        _ = try StoreMigration.migrate(from: try await StoreEnginesTests.populatedSQLite(), to: postgres)
        let store = try StoreEngine.open(postgres)
        // A worker's page, staged and not yet applied by the night's closing step.
        try store.engine.write { db in
            try db.execute(StagingFleetStore.stagingTable)
            try db.execute("INSERT INTO fleet_pages (run_id, source, scope, seq, page, state, body) VALUES (4, 'search', 'top', 1, 1, NULL, '{}')")
        }

        let destination = try await StoreEngine.sqlite.makeLocation()
        let error = #expect(throws: StoreSyncError.self) { try StoreMigration.migrate(from: postgres, to: destination) }
        #expect(error?.code == .invalidArguments)
        #expect(error?.description.contains("1 staged page(s) not yet applied") == true, "\(String(describing: error))")
        #expect(try StoreEngine.open(destination).records().isEmpty, "nothing was copied")

        // Once the night is applied (its log empty), the same migration goes through.
        try store.engine.write { db in try db.execute("DELETE FROM fleet_pages") }
        let copied = try StoreMigration.migrate(from: postgres, to: try await StoreEngine.sqlite.makeLocation())
        #expect(copied.lastRun == 4)
    }
}
