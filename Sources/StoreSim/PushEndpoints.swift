import Foundation

/// The places a publisher tells of a changed feed, as the real ones answer:
/// a WebSub hub's publish endpoint (the form Google's and Superfeedr's hubs
/// take) and a Podping-style notifier (podping.cloud's `GET ?url=`). Each
/// checks the request as strictly as the real service and remembers what
/// it was told, so a test can ask (``SimulatorServer/pushes``).
enum PushEndpoints {
    static let hubPath = "/websub/hub"
    static let podpingPath = "/podping"

    /// A ping the simulator accepted.
    struct Ping: Sendable, Equatable {
        /// `websub` or `podping`.
        var service: String
        /// The feed's URL the ping named.
        var topic: String
    }

    /// `POST /websub/hub`, `application/x-www-form-urlencoded`, `hub.mode=publish`
    /// and the feed as `hub.url` (or `hub.topic`): 204 No Content.
    static func hub(contentType: String?, body: [UInt8]) -> (SimResponse, Ping?) {
        guard let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased(),
              type == "application/x-www-form-urlencoded" else {
            return (refusal(400, "a publish ping is a form (application/x-www-form-urlencoded), got \(contentType ?? "no Content-Type")"), nil)
        }
        let form = QueryParameters(String(decoding: body, as: UTF8.self))
        guard form["hub.mode"] == "publish" else {
            return (refusal(400, "hub.mode must be publish, got \(form["hub.mode"] ?? "nothing")"), nil)
        }
        guard let topic = form["hub.url"] ?? form["hub.topic"], isWebURL(topic) else {
            return (refusal(400, "hub.url must be the feed's http(s) URL"), nil)
        }
        return (SimResponse(status: 204, body: []), Ping(service: "websub", topic: topic))
    }

    /// `GET /podping?url=FEED[&reason=][&medium=]` with an `Authorization` header: 200 "Success!".
    static func podping(query: String?, authorization: String?) -> (SimResponse, Ping?) {
        guard let token = authorization, !token.trimmingCharacters(in: .whitespaces).isEmpty else {
            return (refusal(401, "Podping needs the publisher's token in the Authorization header"), nil)
        }
        let parameters = QueryParameters(query)
        guard let topic = parameters["url"], isWebURL(topic) else {
            return (refusal(400, "url must be the feed's http(s) URL"), nil)
        }
        if let reason = parameters["reason"], !["update", "live", "liveEnd"].contains(reason) {
            return (refusal(400, "reason must be update, live or liveEnd, got \(reason)"), nil)
        }
        return (SimResponse(status: 200, contentType: "text/plain; charset=utf-8", body: Array("Success!".utf8)),
                Ping(service: "podping", topic: topic))
    }

    private static func isWebURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else { return false }
        return ["http", "https"].contains(scheme) && url.host != nil
    }

    private static func refusal(_ status: Int, _ message: String) -> SimResponse {
        SimResponse(status: status, contentType: "text/plain; charset=utf-8", body: Array(message.utf8))
    }
}
