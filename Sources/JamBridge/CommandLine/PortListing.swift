import ALSA

/// What `jambridge ports` prints about the ALSA sequencer: every port of every client, as an
/// `alsa:` endpoint value ready to paste into a route file.
public enum PortListing {
    /// The listing, or why the sequencer could not be read.
    public static func alsaReport() -> Result<String, ALSAError> {
        let sequencer: ALSASequencer
        do {
            sequencer = try ALSASequencer(clientName: "jambridge ports")
        } catch {
            return .failure(error)
        }
        defer { sequencer.close() }
        var text = "# ALSA sequencer ports: paste the value after 'alsa:' (source: plays into jambridge; destination: jambridge plays to it)\n"
        let ports = sequencer.ports()
        if ports.isEmpty { text += "# none\n" }
        for port in ports {
            let roles = [port.isSource ? "source" : nil, port.isDestination ? "destination" : nil].compactMap { $0 }
            let value = "\"\(port.clientName):\(port.address.port)\""
            text += "alsa: \(value)\t# port '\(port.portName)', \(port.address), \(roles.isEmpty ? "not connectable" : roles.joined(separator: " and "))\n"
        }
        return .success(text)
    }
}
