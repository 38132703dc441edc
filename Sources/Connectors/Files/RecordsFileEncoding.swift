import Catalog
import Foundation

/// The character encoding of a records file (`encoding:`). Every file is
/// turned into UTF-8 before it is parsed, a page at a time.
///
/// All three agree with ASCII on bytes below 0x80 and never use such a byte
/// inside a multi-byte character, so rows, quotes and delimiters (ASCII) are
/// found in the file's own bytes, before any transcoding.
public enum RecordsFileEncoding: String, Sendable, CaseIterable {
    case utf8 = "utf-8"
    /// Windows' Western European code page: Latin-1 with € “ ” ‘ ’ – — … in 0x80–0x9F.
    case windows1252 = "windows-1252"
    /// ISO 8859-1. Its 0x80–0x9F are control codes no text file means (they
    /// are Windows-1252's € “ ” … read under the wrong name), so they are
    /// refused like an invalid byte instead of being stored as invisible controls.
    case iso88591 = "iso-8859-1"

    /// Every name a job file may use, canonical names first.
    static let names: [(name: String, encoding: RecordsFileEncoding)] = [
        ("utf-8", .utf8), ("windows-1252", .windows1252), ("iso-8859-1", .iso88591),
        ("utf8", .utf8), ("cp1252", .windows1252), ("windows1252", .windows1252),
        ("latin1", .iso88591), ("latin-1", .iso88591), ("iso8859-1", .iso88591),
    ]

    /// The encoding named `name` (its own name or a common alias such as
    /// `cp1252` or `latin1`), ignoring case and surrounding spaces.
    public init?(name: String) {
        let wanted = name.trimmingCharacters(in: .whitespaces).lowercased()
        guard let found = Self.names.first(where: { $0.name == wanted }) else { return nil }
        self = found.encoding
    }

    /// The Unicode scalar of each byte 0x80–0xFF, 0 where the byte is refused.
    private static let upperHalf: [UInt32] = {
        var windows1252Controls: [UInt32] = [
            0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017D, 0,
            0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
        ]
        windows1252Controls += (0xA0...0xFF).map { UInt32($0) }
        return windows1252Controls
    }()

    /// The character `byte` stands for in this single-byte encoding; nil
    /// where the encoding refuses it (and always for UTF-8, which has no
    /// one-byte characters above 0x7F).
    func scalar(ofByte byte: UInt8) -> Unicode.Scalar? {
        if byte < 0x80 { return Unicode.Scalar(byte) }
        switch self {
        case .utf8: return nil
        case .windows1252:
            let value = Self.upperHalf[Int(byte) - 0x80]
            return value == 0 ? nil : Unicode.Scalar(value)
        case .iso88591:
            return byte < 0xA0 ? nil : Unicode.Scalar(byte)
        }
    }

    /// Whether `byte` is refused by this single-byte encoding.
    fileprivate var refusedBytes: [Bool] {
        (0...255).map { byte in self != .utf8 && scalar(ofByte: UInt8(byte)) == nil }
    }

    static let windows1252Refused = RecordsFileEncoding.windows1252.refusedBytes
    static let iso88591Refused = RecordsFileEncoding.iso88591.refusedBytes

    /// The UTF-8 bytes of each byte 0x80–0xFF in this single-byte encoding (empty where refused).
    static let windows1252UTF8 = utf8Table(.windows1252)
    static let iso88591UTF8 = utf8Table(.iso88591)

    private static func utf8Table(_ encoding: RecordsFileEncoding) -> [[UInt8]] {
        (0x80...0xFF).map { byte in encoding.scalar(ofByte: UInt8(byte)).map { Array(String($0).utf8) } ?? [] }
    }
}

/// Checks bytes against an encoding, fed a buffer at a time (a file is read
/// in blocks, and a UTF-8 character may straddle two of them).
struct EncodingCheck {
    let encoding: RecordsFileEncoding
    /// UTF-8: continuation bytes the current character still needs, and the
    /// range the next one must fall in (Unicode Table 3-7).
    private var need = 0
    private var low: UInt8 = 0x80
    private var high: UInt8 = 0xBF
    /// UTF-8: the file offset of the current character's first byte.
    private var characterStart = 0

    init(_ encoding: RecordsFileEncoding) {
        self.encoding = encoding
    }

    /// Checks `buffer`, whose first byte is at file offset `offset`, after
    /// every buffer before it; returns the offset of the first character
    /// that is not valid (for UTF-8, its first byte).
    mutating func feed(_ buffer: UnsafeBufferPointer<UInt8>, at offset: Int) -> Int? {
        guard let base = buffer.baseAddress else { return nil }
        let count = buffer.count
        var i = 0
        switch encoding {
        case .utf8:
            while i < count {
                if need == 0 {
                    // Text is mostly ASCII: eight bytes at a time until a byte has its high bit set.
                    while i + 8 <= count, UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                        i += 8
                    }
                    while i < count, base[i] < 0x80 { i += 1 }
                    guard i < count else { return nil }
                    characterStart = offset + i
                    switch base[i] {
                    case 0xC2...0xDF: need = 1
                    case 0xE0: need = 2; low = 0xA0
                    case 0xE1...0xEC, 0xEE, 0xEF: need = 2
                    case 0xED: need = 2; high = 0x9F
                    case 0xF0: need = 3; low = 0x90
                    case 0xF1...0xF3: need = 3
                    case 0xF4: need = 3; high = 0x8F
                    default: return characterStart
                    }
                } else {
                    guard base[i] >= low, base[i] <= high else { return characterStart }
                    need -= 1
                    low = 0x80
                    high = 0xBF
                }
                i += 1
            }
            return nil
        case .windows1252, .iso88591:
            let refused = encoding == .windows1252 ? RecordsFileEncoding.windows1252Refused : RecordsFileEncoding.iso88591Refused
            return refused.withUnsafeBufferPointer { refused in
                while i < count {
                    while i + 8 <= count, UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                        i += 8
                    }
                    guard i < count else { return nil }
                    if refused[Int(base[i])] { return offset + i }
                    i += 1
                }
                return nil
            }
        }
    }

    /// At the end of the input: a UTF-8 character left unfinished is invalid.
    func finish() -> Int? { need > 0 ? characterStart : nil }
}

/// Turns bytes of a single-byte encoding into UTF-8.
enum SingleByteTranscoder {
    /// Appends the UTF-8 of `bytes` to `out`; returns the index in `bytes`
    /// of the first byte the encoding refuses (nothing is appended from it on).
    static func append(_ bytes: UnsafeBufferPointer<UInt8>, from encoding: RecordsFileEncoding,
                       to out: inout [UInt8]) -> Int? {
        precondition(encoding != .utf8, "UTF-8 needs no transcoding")
        let table = encoding == .windows1252 ? RecordsFileEncoding.windows1252UTF8 : RecordsFileEncoding.iso88591UTF8
        // Most text is ASCII, copied in runs; the rest grows by at most two bytes per byte.
        out.reserveCapacity(out.count + bytes.count + bytes.count / 8)
        var runStart = 0
        for i in 0..<bytes.count where bytes[i] >= 0x80 {
            if runStart < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i])) }
            let utf8 = table[Int(bytes[i]) - 0x80]
            if utf8.isEmpty { return i }
            out.append(contentsOf: utf8)
            runStart = i + 1
        }
        if runStart < bytes.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...])) }
        return nil
    }
}

/// Counts lines and characters over the bytes before a place in a file.
struct LineColumnCounter {
    let encoding: RecordsFileEncoding
    /// 1-based.
    private(set) var line = 1
    /// Characters on the current line so far.
    private(set) var charactersOnLine = 0

    init(_ encoding: RecordsFileEncoding, line: Int = 1) {
        self.encoding = encoding
        self.line = line
    }

    /// 1-based column of the next character.
    var column: Int { charactersOnLine + 1 }

    mutating func feed(_ bytes: UnsafeBufferPointer<UInt8>) {
        for byte in bytes {
            if byte == 0x0A {
                line += 1
                charactersOnLine = 0
            } else if encoding != .utf8 || byte & 0xC0 != 0x80 {
                // A UTF-8 continuation byte is part of the character before it.
                charactersOnLine += 1
            }
        }
    }
}

/// A byte a records file's encoding refuses, and what to tell the user about it.
struct EncodingProblem {
    var line: Int
    var column: Int
    var encoding: RecordsFileEncoding
    /// The refused byte (for UTF-8, the first byte of the bad character) and up to 3 after it.
    var bytes: [UInt8]
    /// Up to 3 bytes before the refused one.
    var before: [UInt8]

    func error(path: String, wholeFile: Bool) -> StoreSyncError {
        let byte = bytes.first ?? 0
        var reason = "line \(line), column \(column): byte \(Self.hex(byte))"
        switch encoding {
        case .utf8:
            reason += " is not valid UTF-8"
            if let c = RecordsFileEncoding.windows1252.scalar(ofByte: byte), byte >= 0x80 {
                reason += " (in windows-1252 it is '\(Character(c))': the file is probably windows-1252 or iso-8859-1)"
            }
        case .windows1252, .iso88591:
            reason += encoding == .windows1252 ? " is not a character in windows-1252"
                : " is a control code in iso-8859-1, not text"
            if let utf8 = utf8Character() {
                reason += " (the file looks like UTF-8: '\(utf8)' is \(utf8.utf8.map(Self.hex).joined(separator: " ")) in UTF-8)"
            } else if encoding == .iso88591, let c = RecordsFileEncoding.windows1252.scalar(ofByte: byte) {
                reason += " (in windows-1252 it is '\(Character(c))')"
            }
        }
        return StoreSyncError(.malformedPage, "malformed row: \(reason)", place: .file(path: path), remedy: Self.remedy(wholeFile: wholeFile))
    }

    static func remedy(wholeFile: Bool) -> String {
        "Set `encoding:` on this source to the file's encoding (utf-8, windows-1252 or iso-8859-1), or fix the byte; "
            + (wholeFile ? "nothing from this file was stored and nothing was removed"
                : "nothing from this page was stored and nothing was removed")
    }

    /// The UTF-8 character the refused byte is part of, if the bytes around it make one.
    private func utf8Character() -> String? {
        let all = before + bytes
        for start in 0...before.count {
            for end in (before.count + 1)...all.count where end - start >= 2 {
                if let s = String(validating: all[start..<end], as: UTF8.self), s.unicodeScalars.count == 1 { return s }
            }
        }
        return nil
    }

    static func hex(_ byte: UInt8) -> String {
        "0x" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16, uppercase: true)
    }
}
