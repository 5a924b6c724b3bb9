#if canImport(Glibc)
import Glibc
#endif

/// Paths as route files name them, worked out as text (nothing is looked up on disk but the current directory):
/// made absolute against the current directory, with `.`, `..` and repeated slashes taken out; and a folder's names.
public enum FilePaths {
    /// `path` made absolute (against the current directory if relative) and standardized.
    public static func absolute(_ path: String) -> String {
        standardized(path.hasPrefix("/") ? path : currentDirectory() + "/" + path)
    }

    /// `path` against `directory` (unless it is absolute), made absolute and standardized.
    public static func absolute(_ path: String, in directory: String) -> String {
        absolute(path.hasPrefix("/") ? path : directory + "/" + path)
    }

    /// The absolute folder that holds `path`.
    public static func folder(of path: String) -> String {
        let parts = absolute(path).split(separator: "/")
        return "/" + parts.dropLast().joined(separator: "/")
    }

    /// The last part of `path`'s name ("" for the root).
    public static func name(of path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? ""
    }

    /// The last part of `path`'s name without its extension (`rock` for `styles/rock.yaml`).
    public static func baseName(of path: String) -> String {
        let name = name(of: path)
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }

    /// An absolute `path` without `.`, `..` (lexically: a `..` at the root stays there) and empty parts.
    static func standardized(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") where part != "." {
            if part == ".." { _ = parts.popLast() } else { parts.append(part) }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// The names in `folder` but `.` and `..` (none if it cannot be read).
    public static func entries(ofFolder folder: String) -> [String] {
        guard let stream = opendir(folder) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    public static func currentDirectory() -> String {
        guard let directory = getcwd(nil, 0) else { return "/" }
        defer { free(directory) }
        return String(cString: directory)
    }
}
