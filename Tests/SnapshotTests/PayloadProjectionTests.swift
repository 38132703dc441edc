import Catalog
import Foundation
import GRDB
import Snapshot
import Testing

/// The export projection reads a payload once and gives, per column, what
/// SQLite's `json_extract` gives (which it replaced), checked against SQLite itself.
@Suite struct PayloadProjectionTests {
    static let payloads = [
        #"{"a":"text","b":12,"c":-7,"d":0.5,"e":1e3,"f":-2.5E-3,"g":true,"h":false,"i":null,"j":{"x":[1,"y",{"z":null}]},"k":[],"l":{}}"#,
        #"{"a":"quote \" backslash \\ slash \/ tab \t nl \n cr \r bs \b ff \f","b":9223372036854775807,"c":-9223372036854775808}"#,
        #"{"a":"é \u00e9 \u4e2d 😀 \ud83d\ude00","b":9223372036854775808,"c":-9223372036854775809,"d":123456789012345678901234567890}"#,
        #"{ "a" : "spaced" , "j" : { "x" : [ 1 , "a b" , " \" " ] } , "b" : 0 , "d" : -0.0 , "e" : 0.1 }"#,
        #"{"b":1,"a":"members in another order","zz":"not a column","b2":2}"#,
        #"{"a":"","b":-0,"d":1.7976931348623157e308,"e":5e-324,"f":0.30000000000000004,"g":[true,false,null]}"#,
        #"{}"#,
        #"{"a":"same","a":"first one counts"}"#,
    ]
    static let fields = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "missing"]

    @Test func givesWhatJSONExtractGives() throws {
        let queue = try DatabaseQueue()
        // A column listed twice gets the member twice.
        let columns = (Self.fields + ["a"]).map { ExportColumn($0, $0) }
        var projection = PayloadProjection(columns)
        var values: [StoredValue] = []
        for payload in Self.payloads {
            var text = payload
            text.withUTF8 { projection.values(of: $0, into: &values) }
            let expected: [StoredValue] = try queue.read { db in
                try columns.map { column in
                    let row = try Row.fetchOne(db, sql: "SELECT json_extract(?, ?) AS v", arguments: [payload, "$.\"\(column.field)\""])!
                    let value: DatabaseValue = row["v"]
                    switch value.storage {
                    case .null: return .null
                    case .int64(let i): return .integer(i)
                    case .double(let d): return .real(d)
                    case .string(let s): return .text(s)
                    case .blob: return .null
                    }
                }
            }
            #expect(values == expected, "\(payload)")
        }
    }

    @Test func keepsAStringWholePastAnEscapedNUL() {
        // SQLite's json_extract (3.40) stops at \u0000; the projection keeps the whole text.
        var projection = PayloadProjection([ExportColumn("name", "name"), ExportColumn("n", "n")])
        var values: [StoredValue] = []
        var payload = #"{"n":3,"name":"A\u0000B"}"#
        payload.withUTF8 { projection.values(of: $0, into: &values) }
        #expect(values == [.text("A\u{0}B"), .integer(3)])
    }

    @Test func followsMembersThatMoveBetweenRows() {
        // The projection remembers the previous row's member order; a row in another order must still be read right.
        var projection = PayloadProjection([ExportColumn("x", "x"), ExportColumn("y", "y")])
        var values: [StoredValue] = []
        for (payload, expected) in [(#"{"x":1,"y":2}"#, [StoredValue.integer(1), .integer(2)]),
                                    (#"{"y":3,"x":4}"#, [.integer(4), .integer(3)]),
                                    (#"{"y":5}"#, [.null, .integer(5)]),
                                    (#"{"\u0079":6,"x":7}"#, [.integer(7), .integer(6)])] {
            var text = payload
            text.withUTF8 { projection.values(of: $0, into: &values) }
            #expect(values == expected, "\(payload)")
        }
    }
}
