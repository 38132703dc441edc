/// The simulated marketplace ("open market"): product `i`'s list row and
/// detail on a given night. Product ids are `i + 1`, so newer products have
/// higher ids and "newest first" is "highest id first", as on the real server.
///
/// Mutable field groups: the price (price, bargain_price, discounted_price),
/// the stock, the name and, in the camel era only, the description (the
/// snake-era server does not send descriptions, and a change nobody can see
/// would make the ground truth wrong). `issued_at` moves to the night of the
/// latest change, as the real server stamps an edit.
struct ProductCatalog: Sendable {
    static let tag: UInt64 = 0x5052_4F44_5543_5453  // "PRODUCTS"

    enum Group: Int, CaseIterable {
        case price = 0, stock, name, description
    }

    private enum Purpose: UInt64 {
        case fixed = 200, price, stock, name, description, vendor, image
    }

    static let vendorCount = 40

    let seed: UInt64
    let era: PageKeyEra
    let timeline: Timeline
    /// The calendar day of night 1: in the era the real server had those keys.
    let epoch: SimDate
    let faults: ContentFaults

    init(seed: UInt64, count: Int, churn: Churn, era: PageKeyEra, faults: ContentFaults = .none) {
        self.seed = seed
        self.faults = faults
        self.era = era
        let weights: [Double] = era == .camel ? [0.35, 0.35, 0.15, 0.15] : [0.4, 0.4, 0.2]
        timeline = Timeline(seed: seed, tag: Self.tag, initialCount: count, churn: churn, groupWeights: weights)
        epoch = era == .camel ? SimDate(year: 2022, month: 11, day: 4) : SimDate(year: 2022, month: 1, day: 4)
    }

    // MARK: Identity

    func id(_ i: Int) -> Int { i + 1 }

    func key(_ i: Int) -> String { String(id(i)) }

    func index(forKey key: String) -> Int? {
        guard let id = Int(key), id >= 1 else { return nil }
        return id - 1
    }

    // MARK: Fixed fields

    struct Fixed {
        var vendorID: Int
        var currency: String
        var created: SimDate
        var fileExtension: String
        var imageCount: Int
    }

    func fixed(_ i: Int) -> Fixed {
        var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.fixed.rawValue))
        let born = timeline.birthNight(i)
        let created: SimDate
        if born <= 1 {
            // Night-1 products were listed over the year before, older ids earlier.
            let initial = max(timeline.initialCount, 1)
            created = SimDate(day: epoch.day - 1 - (initial - 1 - i) * 400 / initial)
        } else {
            created = SimDate(day: epoch.day + born - 1)
        }
        return Fixed(vendorID: dice.int(in: 1...Self.vendorCount),
                     currency: dice.chance(0.8) ? "KRW" : "USD",
                     created: created,
                     // Real thumbnails sometimes have no file extension.
                     fileExtension: dice.pick([".png", ".jpg", ".jpeg", ".png", ""]),
                     imageCount: dice.int(in: 1...3))
    }

    // MARK: Vendors

    func vendorName(_ vendorID: Int) -> String {
        var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(vendorID), Purpose.vendor.rawValue))
        let stem = dice.pick(Vocabulary.vendorStems)
        return dice.chance(0.3) ? stem : "\(stem)\(dice.int(in: 1...9_999))"
    }

    func vendorCreated(_ vendorID: Int) -> SimDate {
        let bits = StableRandom.hash(seed, Self.tag, UInt64(vendorID), Purpose.vendor.rawValue, 1)
        return SimDate(day: epoch.day - 400 - Int(bits % 300))
    }

    // MARK: Mutable fields

    /// A price in minor units (won for KRW, cents for USD) and its discount.
    struct Price: Equatable {
        var amount: Int
        var discount: Int
    }

    func price(_ i: Int, version: Int, currency: String) -> Price {
        versioned(version) { v, attempt in
            var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.price.rawValue, UInt64(v), UInt64(attempt)))
            // KRW prices are whole hundreds of won; USD prices have cents.
            let amount = currency == "KRW" ? dice.int(in: 1...600) * 100 : dice.int(in: 199...29_999)
            var discount = 0
            if dice.chance(0.45) {
                let percent = dice.int(in: 5...50)
                discount = currency == "KRW" ? amount * percent / 100 / 100 * 100 : amount * percent / 100
            }
            return Price(amount: amount, discount: discount)
        }
    }

    func stock(_ i: Int, version: Int) -> Int {
        versioned(version) { v, attempt in
            var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.stock.rawValue, UInt64(v), UInt64(attempt)))
            return dice.chance(0.1) ? 0 : dice.int(in: 1...1_000)
        }
    }

    func name(_ i: Int, version: Int) -> String {
        versioned(version) { v, attempt in
            var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.name.rawValue, UInt64(v), UInt64(attempt)))
            var name = dice.pick(Vocabulary.productAdjectives) + dice.pick(Vocabulary.productItems)
            if dice.chance(0.2) { name += " \(dice.int(in: 2...12))" }
            return name
        }
    }

    func description(_ i: Int, version: Int) -> String {
        versioned(version) { v, attempt in
            var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.description.rawValue, UInt64(v),
                                              UInt64(attempt)))
            // Real descriptions are sometimes empty.
            if dice.chance(0.1) { return "" }
            return (0..<dice.int(in: 1...3)).map { _ in dice.pick(Vocabulary.descriptionSentences) }.joined(separator: " ")
        }
    }

    // MARK: Rows

    private func dateText(_ date: SimDate) -> String {
        era == .camel ? date.camelEraText : date.snakeEraText
    }

    private func money(_ minorUnits: Int, currency: String) -> JSONOut {
        .double(currency == "KRW" ? Double(minorUnits) : Double(minorUnits) / 100)
    }

    private struct State {
        var fixed: Fixed
        /// As served: content faults included.
        var name: JSONOut
        var description: String?
        var price: Price
        var stock: Int
        var issued: SimDate
    }

    private func state(_ i: Int, night: Int) -> State {
        let fixed = fixed(i)
        let history = timeline.history(i, night: night)
        let issued = history.lastAnyChange.map { SimDate(day: epoch.day + $0 - 1) } ?? fixed.created
        let marks = faults.marks(tag: Self.tag, index: i)
        var description = era == .camel ? description(i, version: history.versions[Group.description.rawValue]) : nil
        let cleanName = name(i, version: history.versions[Group.name.rawValue])
        var name = faults.title(cleanName, marks: marks, tag: Self.tag, index: i).json
        // The huge field goes where the era has free text: the description, or the name in the snake era.
        if marks.contains(.huge) {
            if let text = description {
                description = faults.huge(text, marks: marks)
            } else {
                name = .string(faults.huge(cleanName, marks: marks))
            }
        }
        return State(fixed: fixed, name: name,
                     description: description,
                     price: price(i, version: history.versions[Group.price.rawValue], currency: fixed.currency),
                     stock: stock(i, version: history.versions[Group.stock.rawValue]), issued: issued)
    }

    private func thumbnailStem(_ i: Int, fixed: Fixed, image: Int) -> String {
        var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.image.rawValue, UInt64(image)))
        return "https://s3.ap-northeast-2.amazonaws.com/media.yagom-academy.kr/training-resources/\(fixed.vendorID)/"
            + "\(fixed.created.compactDay)/\(dice.hex(32))"
    }

    private func addCommonFields(_ row: inout JSONObject, _ i: Int, _ s: State, dates: (SimDate) -> String) {
        row.add("thumbnail", thumbnailStem(i, fixed: s.fixed, image: 0) + "_thumb" + s.fixed.fileExtension)
        row.add("currency", s.fixed.currency)
        row.add("price", money(s.price.amount, currency: s.fixed.currency))
        row.add("bargain_price", money(s.price.amount - s.price.discount, currency: s.fixed.currency))
        row.add("discounted_price", money(s.price.discount, currency: s.fixed.currency))
        row.add("stock", s.stock)
        row.add("created_at", dates(s.fixed.created))
        row.add("issued_at", dates(s.issued))
    }

    /// Product `i`'s row in the list (`pages`) on `night`, in the world's era.
    func listRow(_ i: Int, night: Int) -> JSONObject {
        let s = state(i, night: night)
        var row = JSONObject()
        row.add("id", id(i))
        row.add("vendor_id", s.fixed.vendorID)
        if era == .camel { row.add("vendorName", vendorName(s.fixed.vendorID)) }
        row.add("name", s.name)
        if let description = s.description { row.add("description", description) }
        addCommonFields(&row, i, s, dates: dateText)
        return row
    }

    /// Product `i`'s detail (`GET /api/products/{id}`) on `night`: the list
    /// fields plus images and the vendor, shaped like the real detail of the era.
    func detail(_ i: Int, night: Int) -> JSONObject {
        let s = state(i, night: night)
        // The snake-era detail wrote dates with a space and milliseconds.
        let dates: (SimDate) -> String = era == .camel ? { $0.camelEraText } : { $0.spacedText }
        var row = JSONObject()
        row.add("id", id(i))
        row.add("vendor_id", s.fixed.vendorID)
        row.add("name", s.name)
        if let description = s.description { row.add("description", description) }
        addCommonFields(&row, i, s, dates: dates)
        var images: [JSONOut] = []
        for image in 0..<s.fixed.imageCount {
            let stem = thumbnailStem(i, fixed: s.fixed, image: image)
            var object = JSONObject()
            object.add("id", i * 3 + image + 1)
            object.add("url", stem + "_origin" + s.fixed.fileExtension)
            object.add("thumbnail_url", stem + "_thumb" + s.fixed.fileExtension)
            if era == .snake { object.add("succeed", .bool(true)) }
            object.add("issued_at", dates(s.fixed.created))
            images.append(.object(object))
        }
        row.add("images", .array(images))
        var vendor = JSONObject()
        if era == .camel {
            vendor.add("id", s.fixed.vendorID)
            vendor.add("name", vendorName(s.fixed.vendorID))
        } else {
            vendor.add("name", vendorName(s.fixed.vendorID))
            vendor.add("id", s.fixed.vendorID)
            vendor.add("created_at", dates(vendorCreated(s.fixed.vendorID)))
            vendor.add("issued_at", dates(vendorCreated(s.fixed.vendorID)))
        }
        row.add("vendors", .object(vendor))
        return row
    }
}
