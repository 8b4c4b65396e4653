import java.nio.charset.StandardCharsets;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.util.Collections;
import java.util.HexFormat;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import javax.security.auth.login.AppConfigurationEntry;

import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.security.JaasContext;
import org.apache.kafka.common.security.ssl.DefaultSslEngineFactory;
import org.apache.kafka.common.utils.Utils;

/**
 * Reads a client properties file as a Kafka 4 client does (Utils.loadProps, AdminClientConfig, the
 * JAAS parser, the SSL engine factory loading the keystore and truststore) and prints what it
 * understood, one {@code key=value} a line; string values the JAAS parser returned are hex (UTF-8),
 * so passwords with quotes, backslashes or newlines come back byte for byte.
 */
public class ReadClientConfig {
    public static void main(String[] args) throws Exception {
        Properties properties = Utils.loadProps(args[0]);
        properties.putIfAbsent("bootstrap.servers", "localhost:9092");
        Map<String, Object> values = new java.util.HashMap<>(new AdminClientConfig(properties).values());
        System.out.println("security.protocol=" + values.get("security.protocol"));
        if (properties.getProperty("sasl.jaas.config") != null) {
            System.out.println("sasl.mechanism=" + values.get("sasl.mechanism"));
            AppConfigurationEntry entry = JaasContext.loadClientContext(values).configurationEntries().get(0);
            System.out.println("module=" + entry.getLoginModuleName());
            System.out.println("flag=" + entry.getControlFlag());
            for (Map.Entry<String, ?> option : new TreeMap<>(entry.getOptions()).entrySet()) {
                byte[] bytes = option.getValue().toString().getBytes(StandardCharsets.UTF_8);
                System.out.println("option." + option.getKey() + "=" + HexFormat.of().formatHex(bytes));
            }
        }
        for (String key : new TreeMap<>(values).keySet()) {  // the client credentials grant's settings
            Object value = values.get(key);
            if (key.startsWith("sasl.oauthbearer.") && value != null && !(value instanceof java.util.List)) {
                String text = value instanceof org.apache.kafka.common.config.types.Password password
                        ? password.value() : value.toString();
                System.out.println("option." + key + "=" + HexFormat.of().formatHex(text.getBytes(StandardCharsets.UTF_8)));
            }
        }
        if (values.get("security.protocol").toString().contains("SSL")) {
            DefaultSslEngineFactory factory = new DefaultSslEngineFactory();
            factory.configure(values);
            System.out.println("endpoint.identification=" + values.get("ssl.endpoint.identification.algorithm"));
            KeyStore truststore = factory.truststore();
            System.out.println("truststore.entries=" + (truststore == null ? "default" : truststore.size()));
            KeyStore keystore = factory.keystore();
            if (keystore != null) {
                for (String alias : Collections.list(keystore.aliases())) {
                    X509Certificate certificate = (X509Certificate) keystore.getCertificate(alias);
                    System.out.println("keystore.certificate=" + certificate.getSubjectX500Principal().getName());
                    System.out.println("keystore.chain=" + keystore.getCertificateChain(alias).length);
                }
            }
            factory.close();
        }
    }
}
